package journal

type options struct {
	siblingKey string
}

// Option configures Open.
type Option func(*options)

// AdoptSiblings makes Open take over the records of the sibling directories (the other forwarder
// names under the same state directory) whose forwarder is gone, when they were written under the
// same key: a DaemonSet's pods have one name each, so a replaced pod's successor finds the journal
// of its predecessor this way. key names the data plane the records belong to; a sibling written
// under another key belongs to another forwarder and is never touched.
func AdoptSiblings(key string) Option {
	return func(o *options) { o.siblingKey = key }
}
