// Package netnsid names a network namespace so that a restarted forwarder can find it again and can
// never mistake another namespace for it.
//
// A namespace's nsfs inode is what clients send (inode://<dev>/<ino>), but inodes are reused once a
// namespace is gone. An Identity adds the namespace's cookie (SO_NETNS_COOKIE, a 64-bit number the
// kernel never hands out twice while it runs, Linux 5.14 and later) and the kernel's boot ID (cookies
// restart at boot, and a journal on a hostPath outlives a reboot). Open accepts a namespace only when
// all of them match; a namespace whose inode matches but whose cookie does not is another namespace,
// and is reported as not found. A kernel without SO_NETNS_COOKIE yields identities without a
// cookie, which are not Proven: Open refuses them, so nothing acts on a namespace it cannot tell
// from another.
package netnsid
