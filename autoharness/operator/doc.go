// Package operator holds the procedures of the auto-harness operator CLI
// that are more than one request of the control plane: following a listing
// page by page within a bound, a host inventory's read-modify-write (attach
// or detach one repository, the rest of the record as it was read), waiting
// for a session, the host smoke with the teardown that always runs, the
// next step for each record that blocks a repository's delete, and the
// allowlist of the principal fields a CLI may print.
//
// Every request goes through autoharness.Client.Request against the routes
// `auto-harness api` would call; nothing here is a private path. Records
// are handled as the server's bytes: what is written back (an inventory)
// is the record as read with one member changed, its other members, their
// order and their spelling untouched.
package operator
