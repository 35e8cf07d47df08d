// Command k8s-image writes a one-layer container image, made of files on this machine, as an
// image tarball that `ctr images import` loads: how make k8s-e2e gets its images without Docker
// or a registry. Dynamically linked programs bring their shared libraries (-libs): each is found
// with ldd and stored at the path the program looks for it.
//
//	k8s-image -ref k8s-e2e.local/pause:e2e -o pause.tar -file bin/k8s-pause=/pause -entrypoint /pause
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// pairs is a repeatable SRC=DST flag.
type pairs [][2]string

func (p *pairs) String() string { return fmt.Sprint(*p) }

func (p *pairs) Set(v string) error {
	src, dst, ok := strings.Cut(v, "=")
	if !ok || src == "" || !strings.HasPrefix(dst, "/") {
		return fmt.Errorf("%q: want SRC=/DST", v)
	}
	*p = append(*p, [2]string{src, dst})
	return nil
}

type list []string

func (l *list) String() string     { return strings.Join(*l, " ") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var (
		ref, out         string
		files, dirs, sym pairs
		entrypoint, env  list
		libs             bool
	)
	flag.StringVar(&ref, "ref", "", "image reference, e.g. k8s-e2e.local/forwarder-vpp:e2e")
	flag.StringVar(&out, "o", "", "image tarball to write")
	flag.Var(&files, "file", "SRC=/DST: a file (symlinks followed), repeatable")
	flag.Var(&dirs, "dir", "SRC=/DST: a directory tree (symlinks kept), repeatable")
	flag.Var(&sym, "symlink", "TARGET=/LINK: a symbolic link, repeatable")
	flag.Var(&entrypoint, "entrypoint", "the entrypoint, one flag per word")
	flag.Var(&env, "env", "KEY=VALUE, repeatable (PATH defaults to /bin:/usr/bin:/sbin:/usr/sbin)")
	flag.BoolVar(&libs, "libs", false, "add the shared libraries of every dynamically linked file (ldd)")
	flag.Parse()
	if ref == "" || out == "" {
		fmt.Fprintln(os.Stderr, "k8s-image: -ref and -o are required")
		os.Exit(2)
	}
	if err := run(ref, out, files, dirs, sym, entrypoint, env, libs); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-image:", err)
		os.Exit(1)
	}
}

func run(ref, out string, files, dirs, sym pairs, entrypoint, env []string, libs bool) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	l := newLayer()
	for _, d := range []string{"/tmp", "/etc", "/proc", "/sys", "/dev", "/run", "/var/run"} {
		l.dir(d, 0o1777)
	}
	for _, f := range files {
		if err := l.file(f[0], f[1]); err != nil {
			return err
		}
	}
	for _, d := range dirs {
		if err := l.tree(d[0], d[1]); err != nil {
			return err
		}
	}
	for _, s := range sym {
		l.symlink(s[0], s[1])
	}
	if libs {
		var owned []string
		for _, d := range dirs {
			real, err := filepath.EvalSymlinks(d[0])
			if err != nil {
				return err
			}
			owned = append(owned, real)
		}
		if err := l.sharedLibraries(owned); err != nil {
			return err
		}
	}
	layerBytes, err := l.bytes()
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Entrypoint = entrypoint
	cfg.Config.Env = withPath(env)
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	return tarball.WriteToFile(out, tag, img)
}

func withPath(env []string) []string {
	for _, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			return env
		}
	}
	return append([]string{"PATH=/bin:/usr/bin:/sbin:/usr/sbin"}, env...)
}

// layer collects entries by their path in the image, so a library two programs need is stored once.
type layer struct {
	entries  map[string]entry
	elfFiles []string // host paths of the regular files added, for -libs
}

type entry struct {
	hdr  tar.Header
	from string // host file holding the content of a regular file
}

func newLayer() *layer { return &layer{entries: map[string]entry{}} }

// parents adds the directories above p.
func (l *layer) parents(p string) {
	for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
		if _, ok := l.entries[d]; !ok {
			l.entries[d] = entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755}}
		}
	}
}

func (l *layer) dir(p string, mode int64) {
	l.parents(p)
	l.entries[p] = entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: p, Mode: mode}}
}

func (l *layer) symlink(target, link string) {
	l.parents(link)
	l.entries[link] = entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: link, Linkname: target, Mode: 0o777}}
}

// file adds the content of src (a symlink is followed) at dst.
func (l *layer) file(src, dst string) error {
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	l.parents(dst)
	l.entries[dst] = entry{
		hdr:  tar.Header{Typeflag: tar.TypeReg, Name: dst, Mode: int64(info.Mode().Perm()), Size: info.Size()},
		from: src,
	}
	l.elfFiles = append(l.elfFiles, src)
	return nil
}

// tree adds the directory src at dst, keeping its symbolic links.
func (l *layer) tree(src, dst string) error {
	// The tree itself may be reached through a link (.cache/vpp is one in a helper's clone).
	src, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := path.Join(dst, filepath.ToSlash(rel))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			l.symlink(link, target)
		case d.IsDir():
			if target != "/" {
				l.dir(target, 0o755)
			}
		case d.Type().IsRegular():
			return l.file(p, target)
		}
		return nil
	})
}

// sharedLibraries adds, at the paths the loader finds them, the libraries that the added files
// need, except those inside the added trees (owned), which the image already has at their place.
func (l *layer) sharedLibraries(owned []string) error {
	for _, f := range l.elfFiles {
		if !isDynamicELF(f) {
			continue
		}
		deps, err := ldd(f)
		if err != nil {
			return fmt.Errorf("ldd %s: %w", f, err)
		}
		for _, dep := range deps {
			if inside(dep, owned) {
				continue
			}
			if _, ok := l.entries[dep]; ok {
				continue
			}
			if err := l.file(dep, dep); err != nil {
				return err
			}
		}
	}
	return nil
}

func inside(p string, dirs []string) bool {
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err == nil && strings.HasPrefix(p, abs+"/") {
			return true
		}
	}
	return false
}

func isDynamicELF(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != "\x7fELF" {
		return false
	}
	out, err := exec.Command("ldd", p).CombinedOutput()
	return err == nil && !bytes.Contains(out, []byte("not a dynamic executable")) &&
		!bytes.Contains(out, []byte("statically linked"))
}

// ldd lists the absolute paths of p's shared libraries and its loader.
func ldd(p string) ([]string, error) {
	out, err := exec.Command("ldd", p).Output()
	if err != nil {
		return nil, err
	}
	var deps []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 3 && fields[1] == "=>" && strings.HasPrefix(fields[2], "/"):
			deps = append(deps, fields[2])
		case len(fields) >= 1 && strings.HasPrefix(fields[0], "/"):
			deps = append(deps, fields[0])
		case len(fields) >= 3 && fields[1] == "=>" && fields[2] == "not":
			// A plugin's libraries are found through the program that loads it: VPP's plugins
			// name VPP's own libraries, which the image has beside the vpp binary.
			fmt.Fprintf(os.Stderr, "k8s-image: %s: %s not found by ldd, left to the loader\n", p, fields[0])
		}
	}
	return deps, sc.Err()
}

// bytes writes the layer's tar, parents before children.
func (l *layer) bytes() ([]byte, error) {
	paths := make([]string, 0, len(l.entries))
	for p := range l.entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		e := l.entries[p]
		hdr := e.hdr
		hdr.Name = strings.TrimPrefix(p, "/")
		if hdr.Typeflag == tar.TypeDir {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(&hdr); err != nil {
			return nil, err
		}
		if e.from != "" {
			if err := copyFile(tw, e.from, hdr.Size); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func copyFile(w io.Writer, src string, size int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	n, err := io.Copy(w, io.LimitReader(f, size))
	if err == nil && n != size {
		err = errors.New(src + " changed while it was being added")
	}
	return err
}
