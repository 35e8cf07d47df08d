// Package journal is the forwarder's write-ahead record of its connections: what a restarted
// forwarder needs to adopt what the previous run built, or to release it, and nothing else.
//
// VPP and the kernel keep what a forwarder built after it dies, but cannot say which connection an
// empty policy table belonged to, and sdk-vpp's VPP tags (the bare connection ID) do not say which
// agent made an interface. The journal holds one small file per connection (keyed by the ID of the
// forwarder's own path segment): the connection on both sides stripped to IDs, mechanism and IP
// context (no tokens), the VPP and kernel interfaces of each side, the VPP bridge domains they are
// members of (remote vlan), and the identity of every namespace it names (package netnsid). Files
// are written to a temporary name and renamed, so a crash of the forwarder leaves either the old or
// the new record; they are not synced, because nothing they name outlives the page cache (see
// writeRecord).
//
// It is written ahead of the data plane: NewServer records the intent before the chain programs
// anything, NewClient completes it once the next hop answered (the IP context and the outgoing
// side), NewServer commits what was built after success. A refresh that changes nothing rewrites
// nothing, at the same cost however many connections live. A Close that fails keeps the record and
// releases what it names with backoff (Retire). A record that cannot be read is moved to the
// unreadable subdirectory, never deleted.
//
// A directory that takes no writes (a read-only or full filesystem) does not stop the forwarder:
// the journal holds its records in memory, says loudly that restart recovery is off (an ERROR line
// at the switch and at each failed probe, the forwarder_vpp_journal_writable gauge, Writable),
// probes the directory with backoff, and once it takes writes again locks it and writes the whole
// current set, removing the records forgotten meanwhile. Until then a crash loses what only
// memory held: the next run does not know those connections, and never touches what they built
// (inspect lists it as foreign).
//
// Each journal directory is locked while its forwarder runs; AdoptSiblings takes over the records
// of the directories whose forwarder is gone, so that a replaced pod (a new NSM_NAME) finds what
// its predecessor left.
package journal
