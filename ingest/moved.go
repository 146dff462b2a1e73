package ingest

import (
	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/ingest/inbox"
)

// The names below moved out of the edge (issue 47): the atomic write to
// ingest/inbox, replay and erasure to ingest/admin. They stay here only
// for the tests of packages that are not switched yet (consumers,
// ingest/relay, schemas); nothing else may use them, and they go once
// those tests import the new packages.

// Deprecated: use inbox.Record.
type Record = inbox.Record

// Deprecated: use inbox.Outcome.
type Outcome = inbox.Outcome

// Deprecated: use inbox.Writer.
type Writer = inbox.Writer

// Deprecated: use inbox.NewWriter.
var NewWriter = inbox.NewWriter

// Deprecated: use admin.Erasure.
type Erasure = admin.Erasure

// Deprecated: use admin.Erase.
var Erase = admin.Erase

// Deprecated: use admin.ReplayTarget.
type ReplayTarget = admin.ReplayTarget

// Deprecated: use admin.ReplayRequest.
type ReplayRequest = admin.ReplayRequest

// Deprecated: use admin.Replay.
var Replay = admin.Replay

// Deprecated: use admin.DeadFilter.
type DeadFilter = admin.DeadFilter

// Deprecated: use admin.FindDead.
var FindDead = admin.FindDead

// Deprecated: use admin.ErrNotFound.
var ErrNotFound = admin.ErrNotFound

// Deprecated: use admin.ErrNotReplayable.
var ErrNotReplayable = admin.ErrNotReplayable
