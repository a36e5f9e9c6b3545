package wire

// GoldenStreams is goldenStreams for the package's external tests.
var GoldenStreams = goldenStreams
