// Package journal keeps a crash-safe record of the forwarder's live kernel connections, so that a
// restarted forwarder can still remove what they installed in client namespaces.
//
// The kernel keeps a connection's policy rules and routes after the forwarder dies, but cannot say
// which connection an empty policy table belonged to. The journal holds, per connection, one small
// file with only what a later cleanup needs: the connection and path segment IDs, the kernel
// mechanism (netns URL, interface name) and the IP context; tokens are stripped. Files are written
// to a temporary name, synced and renamed, so a crash leaves either the old or the new record.
//
// A refresh that changes nothing but tokens rewrites nothing: the journal compares the stripped
// connection with what it holds for that ID, which costs the same however many connections live.
package journal
