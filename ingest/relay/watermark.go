package relay

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
)

// txn is one committed transaction on its way to Kafka: it is done when
// every record of it is acknowledged by Kafka and its rows are marked.
type txn struct {
	end        pglogrepl.LSN // commit end LSN: what is confirmed once done
	commitTime time.Time
	rows       []*Row
	remaining  atomic.Int64 // records not yet acknowledged by Kafka
	done       bool         // guarded by watermark.mu
}

// watermark is the contiguous watermark over commit LSNs: transactions are
// added in commit order, finish in any order, and the confirmed LSN is the
// end LSN of the last transaction such that it and every earlier one are
// done. Nothing is ever confirmed on receipt.
type watermark struct {
	mu        sync.Mutex
	pending   []*txn // in commit order; pending[0] is the oldest not done
	confirmed pglogrepl.LSN
	open      int // transactions being received (begun, not yet committed)
}

// setOpen records how many transactions are being received; while any is,
// keepalives do not advance the confirmed LSN.
func (w *watermark) setOpen(n int) {
	w.mu.Lock()
	w.open = n
	w.mu.Unlock()
}

func newWatermark(start pglogrepl.LSN) *watermark { return &watermark{confirmed: start} }

// add registers a committed transaction with n records.
func (w *watermark) add(end pglogrepl.LSN, commitTime time.Time, rows []*Row) *txn {
	t := &txn{end: end, commitTime: commitTime, rows: rows}
	t.remaining.Store(int64(len(rows)))
	w.mu.Lock()
	w.pending = append(w.pending, t)
	w.mu.Unlock()
	return t
}

// complete marks t done and advances the confirmed LSN over the done prefix.
func (w *watermark) complete(t *txn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t.done = true
	i := 0
	for i < len(w.pending) && w.pending[i].done {
		if w.pending[i].end > w.confirmed {
			w.confirmed = w.pending[i].end
		}
		i++
	}
	if i > 0 {
		clear(w.pending[:i])
		w.pending = w.pending[i:]
	}
}

// state returns the confirmed LSN, whether nothing is pending, and the
// commit time of the oldest pending transaction.
func (w *watermark) state() (confirmed pglogrepl.LSN, idle bool, oldest time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) > 0 {
		oldest = w.pending[0].commitTime
	}
	return w.confirmed, len(w.pending) == 0, oldest
}

// advanceIdle moves the confirmed LSN to lsn (the server's WAL end from a
// keepalive) when nothing is pending or being received; it reports the
// confirmed LSN.
func (w *watermark) advanceIdle(lsn pglogrepl.LSN) pglogrepl.LSN {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) == 0 && w.open == 0 && lsn > w.confirmed {
		w.confirmed = lsn
	}
	return w.confirmed
}
