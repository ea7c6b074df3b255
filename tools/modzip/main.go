// Command modzip writes a Go module version as a module proxy serves it (the GOPROXY
// protocol): <out>/<escaped module path>/@v/<version>.info, .mod and .zip, and the list
// of versions (this one), which `go get <module>@latest` reads.
//
//	modzip -repo ROOT -subdir clients/go -version v1.2.3 -out DIR
//
// The zip is made by golang.org/x/mod/zip from the committed tree at HEAD (git archive, so
// nothing untracked), as the go command makes it from a tag: the same file selection (no
// nested modules, no vendor/, size limits) and the same layout. (zip.CreateFromVCS would
// do the archiving itself, but only where .git is a directory, not in a git worktree.)
package main

import (
	"archive/tar"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	repo := flag.String("repo", ".", "the git repository's root")
	subdir := flag.String("subdir", "", "the module's directory inside the repository")
	version := flag.String("version", "", "the module version, vX.Y.Z")
	out := flag.String("out", "", "the proxy directory to write into")
	flag.Parse()
	if err := run(*repo, *subdir, *version, *out); err != nil {
		fmt.Fprintln(os.Stderr, "modzip:", err)
		os.Exit(1)
	}
}

func run(repo, subdir, version, out string) error {
	if version == "" || out == "" {
		return fmt.Errorf("-version and -out are required")
	}
	gomod, err := git(repo, "show", "HEAD:"+filepath.ToSlash(filepath.Join(subdir, "go.mod")))
	if err != nil {
		return err
	}
	path := modfile.ModulePath([]byte(gomod))
	if path == "" {
		return fmt.Errorf("%s/go.mod names no module", subdir)
	}
	mod := module.Version{Path: path, Version: version}
	if err := module.Check(path, version); err != nil {
		return err
	}
	// The proxy serves the commit's time: what a tag at HEAD would report.
	stamp, err := git(repo, "log", "-1", "--format=%cI", "HEAD")
	if err != nil {
		return err
	}
	when, err := time.Parse(time.RFC3339, strings.TrimSpace(stamp))
	if err != nil {
		return err
	}
	escaped, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, when.UTC()})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".info"), info, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "list"), []byte(version+"\n"), 0o644); err != nil {
		return err
	}
	tree, err := os.MkdirTemp("", "modzip-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tree)
	if err := extract(repo, "HEAD:"+filepath.ToSlash(subdir), tree); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, version+".zip"))
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(f, mod, tree); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// extract writes the committed tree-ish into dir: regular files only, as zip.Create wants.
func extract(repo, treeish, dir string) error {
	cmd := exec.Command("git", "-C", repo, "archive", "--format=tar", treeish)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	r := tar.NewReader(stdout)
	for {
		h, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeFile(target, r, os.FileMode(h.Mode).Perm())
		}
		if err != nil {
			return err
		}
	}
	return cmd.Wait()
}

func writeFile(path string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func git(repo string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}
