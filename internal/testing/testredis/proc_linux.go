package testredis

import "syscall"

// procAttr makes the server die with the test binary, even when the
// binary is killed before its cleanups run (a test timeout, a fuzz
// worker stopped).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
