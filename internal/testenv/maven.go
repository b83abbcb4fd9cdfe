package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// javaLauncher is a small Java program kept in the repository
// (scripts/<dir>/<Main>.java) with a pom naming its dependencies, which the
// tests run to start a real Java service or tool.
type javaLauncher struct {
	dir         string   // under scripts/
	pom         string   // file name in dir
	main        string   // class name; the source is dir/<main>.java; "" for none
	cacheName   string   // prefix of the cache directory
	mvnArgs     []string // extra arguments to mvn dependency:build-classpath
	what        string   // what Maven resolves, for errors
	installHint string
}

// classpath resolves the launcher's dependencies with Maven and compiles it,
// once: the result is cached under the user cache directory, keyed by the
// pom's and the launcher's contents. Test binaries of several packages may
// start at once: one resolves, the others wait for it. It returns the jar
// classpath and the directory holding the compiled launcher.
func (j javaLauncher) classpath() (cp, classes string, err error) {
	src := filepath.Join(repoRoot(), "scripts", j.dir)
	pomPath, mainPath := filepath.Join(src, j.pom), filepath.Join(src, j.main+".java")
	pom, err := os.ReadFile(pomPath)
	if err != nil {
		return "", "", err
	}
	var launcher []byte // none when the service has a main class of its own
	if j.main != "" {
		if launcher, err = os.ReadFile(mainPath); err != nil {
			return "", "", err
		}
	}
	sum := sha256.Sum256(append(append([]byte{}, pom...), launcher...))
	cacheRoot, err := os.UserCacheDir()
	if err != nil {
		cacheRoot = os.TempDir()
	}
	cache := filepath.Join(cacheRoot, "tributary", j.cacheName+"-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", "", err
	}
	unlock, err := flock(filepath.Join(cache, ".lock"))
	if err != nil {
		return "", "", err
	}
	defer unlock()

	cpFile := filepath.Join(cache, "classpath.txt")
	classes = filepath.Join(cache, "classes")
	if b, err := os.ReadFile(cpFile); err == nil && jarsPresent(string(b)) {
		if _, err := os.Stat(filepath.Join(classes, j.main+".class")); err == nil || j.main == "" {
			return strings.TrimSpace(string(b)), classes, nil
		}
	}
	for _, tool := range []string{"mvn", "javac", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", "", fmt.Errorf("%s is not installed (needed for %s); install it with: %s", tool, j.what, j.installHint)
		}
	}
	tmp := cpFile + ".tmp"
	args := append([]string{"-B", "-q", "-f", pomPath, "dependency:build-classpath", "-Dmdep.outputFile=" + tmp}, j.mvnArgs...)
	if out, err := exec.Command("mvn", args...).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("resolving %s with Maven (mvn dependency:build-classpath in scripts/%s): %v\n%s", j.what, j.dir, err, out)
	}
	b, err := os.ReadFile(tmp)
	if err != nil {
		return "", "", err
	}
	cp = strings.TrimSpace(string(b))
	os.RemoveAll(classes)
	if j.main == "" {
		return cp, classes, os.Rename(tmp, cpFile)
	}
	if out, err := exec.Command("javac", "-nowarn", "-cp", cp, "-d", classes, mainPath).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("compiling scripts/%s/%s.java: %v\n%s", j.dir, j.main, err, out)
	}
	if err := os.Rename(tmp, cpFile); err != nil {
		return "", "", err
	}
	return cp, classes, nil
}
