// Package gopeer is what the benchmarks' Go peers share: failing with a message, the
// versions a peer was built with, and its own CPU and memory, read as the Rust side
// reads them (getrusage, /proc/self/status).
package gopeer

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Fail prints the message, prefixed with the program's name, and exits with status 1.
func Fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, filepath.Base(os.Args[0])+": "+format+"\n", args...)
	os.Exit(1)
}

// ModuleVersion is the version of module path this binary was built with, from its
// build info.
func ModuleVersion(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(no build info)"
	}
	for _, dep := range info.Deps {
		if dep.Path == path {
			if dep.Replace != nil {
				return dep.Replace.Version
			}
			return dep.Version
		}
	}
	return "(not linked)"
}

// GoVersion is the Go release this binary was built with.
func GoVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		return info.GoVersion
	}
	return "go (unknown)"
}

// Mark is a moment, with the process's CPU time up to it.
type Mark struct {
	wall time.Time
	user time.Duration
	sys  time.Duration
}

// Now is the current moment.
func Now() Mark {
	user, sys := rusage()
	return Mark{wall: time.Now(), user: user, sys: sys}
}

// Since is the seconds of wall time, CPU (user + sys), user and sys since the mark.
func (m Mark) Since() (float64, float64, float64, float64) {
	user, sys := rusage()
	u, s := (user - m.user).Seconds(), (sys - m.sys).Seconds()
	return time.Since(m.wall).Seconds(), u + s, u, s
}

func rusage() (time.Duration, time.Duration) {
	var usage syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	return time.Duration(usage.Utime.Nano()), time.Duration(usage.Stime.Nano())
}

// Status is the numeric fields of /proc/self/status (kB for memory), by name with its
// colon.
func Status() map[string]uint64 {
	text, _ := os.ReadFile("/proc/self/status")
	fields := map[string]uint64{}
	for _, line := range strings.Split(string(text), "\n") {
		words := strings.Fields(line)
		if len(words) < 2 {
			continue
		}
		if value, err := strconv.ParseUint(words[1], 10, 64); err == nil {
			fields[words[0]] = value
		}
	}
	return fields
}

// Mem is the process's resident set size and its peak, KiB.
type Mem struct{ RSS, Peak uint64 }

// Memory is VmRSS and VmHWM of this process.
func Memory() Mem {
	fields := Status()
	return Mem{RSS: fields["VmRSS:"], Peak: fields["VmHWM:"]}
}

// ResetPeak resets VmHWM to the current RSS.
func ResetPeak() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}
