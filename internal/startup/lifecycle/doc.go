// Package lifecycle runs the forwarder's start-up phases, logging each with its duration, and
// undoes them on shutdown in reverse order, each undo step bounded in time so that shutdown
// always ends.
package lifecycle
