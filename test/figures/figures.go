package figures

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Run is one run of a measuring command.
type Run struct {
	// Command is what a person types to measure again, e.g. "make bench".
	Command string
	// Argv is what Command ran, when it ran something else (shown next to Command).
	Argv     []string
	Started  time.Time
	Duration time.Duration
	// ExitStatus is the command's; a failed run's figures are written too, saying so.
	ExitStatus int
}

// Header is the head of a figures document: the title, then the command, the commit, the date
// and the machine, each on a line of its own.
func Header(root, title string, run Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- Written by `%s`; its next run overwrites this file. -->\n", run.Command)
	fmt.Fprintf(&b, "# %s\n\n", title)
	command := "`" + run.Command + "`"
	if len(run.Argv) > 0 {
		quoted := make([]string, len(run.Argv))
		for i, arg := range run.Argv {
			quoted[i] = shellQuote(arg)
		}
		command += " (`" + strings.Join(quoted, " ") + "`)"
	}
	fmt.Fprintf(&b, "- Command: %s, exit status %d, %s\n", command, run.ExitStatus, run.Duration.Round(time.Second))
	fmt.Fprintf(&b, "- Commit: %s\n", Commit(root))
	fmt.Fprintf(&b, "- Date: %s\n", run.Started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- Machine: %s\n\n", Machine())
	return b.String()
}

// shellQuote writes arg so that a shell passes it on unchanged: '^$' stays quoted.
func shellQuote(arg string) string {
	if arg != "" && strings.Trim(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=,:+-") == "" {
		return arg
	}
	return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
}

// Commit is HEAD's short hash in root, saying when the tree had uncommitted changes.
func Commit(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown (not a git checkout)"
	}
	commit := strings.TrimSpace(string(out))
	if status, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(status) > 0 {
		commit += " with uncommitted changes"
	}
	return commit
}

// Machine says what the figures ran on: CPUs, their model, memory, kernel and load.
func Machine() string {
	parts := []string{fmt.Sprintf("%d vCPUs", runtime.NumCPU())}
	if model := procField("/proc/cpuinfo", "model name"); model != "" {
		parts = append(parts, fmt.Sprintf("%q", model))
	}
	if mem := procField("/proc/meminfo", "MemTotal"); mem != "" {
		var kib int
		if _, err := fmt.Sscanf(mem, "%d kB", &kib); err == nil {
			parts = append(parts, fmt.Sprintf("%d GiB", (kib+1<<19)>>20))
		}
	}
	if release, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		parts = append(parts, "Linux "+strings.TrimSpace(string(release)))
	}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		parts = append(parts, "load average "+strings.Join(strings.Fields(string(load))[:3], " ")+" at the end")
	}
	return strings.Join(parts, ", ")
}

// procField is the value of the first "name : value" line of a /proc file.
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		key, value, ok := strings.Cut(scanner.Text(), ":")
		if ok && strings.TrimSpace(key) == name {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// Write writes the document at path: the header, then body.
func Write(root, path, title string, run Run, body string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(Header(root, title, run)+strings.TrimLeft(body, "\n")), 0o644) //nolint:gosec // a document
}
