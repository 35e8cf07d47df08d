// Package figures writes the measurement documents under docs/ (compare.md, load.md, bench.md):
// each is written by the command that measures it, headed by that command, its exit status and
// duration, the commit, the date and the machine, so that a figure never outlives what it says
// it came from. The next run of the command overwrites the document.
package figures
