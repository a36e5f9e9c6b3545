package main

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The Dockerfile builds with CGO_ENABLED=0: the binary it builds must be
// static (no program interpreter, no shared libraries), and every path
// it copies from the build context must exist. (make image builds the
// image itself where Docker is installed.)
func TestImageParts(t *testing.T) {
	f, err := os.Open("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	copies := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[0] != "COPY" || strings.HasPrefix(fields[1], "--from") {
			continue
		}
		for _, src := range fields[1 : len(fields)-1] {
			copies++
			if _, err := os.Stat(filepath.Join("../..", src)); err != nil {
				t.Errorf("the Dockerfile copies %s, which does not exist", src)
			}
		}
	}
	if copies == 0 {
		t.Fatal("no COPY found in the Dockerfile")
	}

	bin := filepath.Join(t.TempDir(), "toolgate")
	cmd := exec.Command("go", "build", "-pgo=off", "-o", bin, ".") // what is checked does not depend on the profile, and it would compile everything again
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	e, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, p := range e.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is dynamically linked (program header %v)", p.Type)
		}
	}
	if libs, _ := e.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries: %v", libs)
	}
}

// The gateway binary links no provider SDK: the demo's clients live in
// cmd/demo. go list names every package the binary is built from.
func TestNoSDKLinked(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for pkg := range strings.Lines(string(out)) {
		n++
		for _, sdk := range []string{"github.com/openai/", "github.com/anthropics/", "google.golang.org/genai", "github.com/aws/aws-sdk-go-v2/service/"} {
			if strings.HasPrefix(pkg, sdk) && !credentialService(pkg) {
				t.Errorf("the gateway binary links %s", strings.TrimSpace(pkg))
			}
		}
	}
	if n < 100 {
		t.Fatalf("go list named %d packages: the gateway has far more", n)
	}
}

// credentialService reports a package of the AWS services the default
// credentials chain itself calls (STS for web identity and roles, SSO and
// its OIDC, sign-in): auth: aws needs them; no model API's client.
func credentialService(pkg string) bool {
	for _, svc := range []string{"sts", "sso", "ssooidc", "signin", "internal"} {
		if p := "github.com/aws/aws-sdk-go-v2/service/" + svc; strings.TrimSpace(pkg) == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return false
}
