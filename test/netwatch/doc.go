// Package netwatch records what changes in a network namespace from the kernel's own rtnetlink
// notifications: links added and deleted, and every address, route and rule write. Tests use it to
// prove that a step wrote nothing (a restart that adopts intact state) or to show what it did.
// Test tooling only.
package netwatch
