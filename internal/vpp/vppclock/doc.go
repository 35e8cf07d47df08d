// Package vppclock checks that VPP's clock keeps the kernel's pace.
//
// VPP v24.10 on a CPU without a TSC-frequency CPUID leaf (AMD EPYC, among others) estimates its
// TSC frequency over one millisecond at start-up. When the process is descheduled right after
// it reads the kernel's time at the start of that millisecond, the estimate is off by as much as
// the stall: a 300 ms stall makes VPP's clock run 300 times fast. VPP then rejects every later
// correction ("Rejecting large frequency change" several thousand times a second), stops
// answering new API clients within seconds and no longer ends on SIGTERM. Nothing in VPP's API
// says so; the only cure is to start VPP again.
package vppclock
