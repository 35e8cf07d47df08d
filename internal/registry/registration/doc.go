// Package registration registers the forwarder as a network service endpoint with the registry
// behind nsmgr (NSM_CONNECT_TO), keeps the registration refreshed, and removes it on shutdown.
package registration
