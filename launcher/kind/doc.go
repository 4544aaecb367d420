// Package kind is the side of the run a kind (launcher/<kind>) sees, as
// database/sql/driver is to database/sql: what a kind implements and the
// shared helpers it may use. The orchestrator, launcher, imports it; a kind
// imports it and never launcher.
package kind
