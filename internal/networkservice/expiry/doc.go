// Package expiry releases a connection's data plane when the connection expires, whatever the
// control plane did about it.
//
// sdk's endpoint chain runs the timeout element after authorize, and the Close that timeout fires
// on expiry travels through authorize too. By then the path's tokens have expired, so the default
// OPA policies refuse it (PermissionDenied), begin forgets the connection anyway, and every VPP and
// kernel resource behind it leaks (field report 1). This element sits behind authorize, remembers
// each connection's expiry and, if no Close has reached it shortly after that moment, closes the
// rest of the chain itself.
package expiry
