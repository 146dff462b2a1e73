package ingest

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/gatehouse/gatehouse/ingest/admission"
)

// errSlowBody is a body that came slower than MinBodyRate.
var errSlowBody = errors.New("request body slower than the minimum rate")

// bodyChunk is the most a body's buffer grows by at once, and so the most
// charged ahead of what arrived.
const bodyChunk = 16 << 10

// readBody reads the raw body, at most limit bytes, and at no less than
// the minimum rate: the read deadline is the start plus BodyGrace plus the
// bytes read so far at MinBodyRate, so a client trickling its body is cut
// once it falls behind, not after the server's whole read timeout. Where
// the connection cannot take a deadline (HTTP/2 through some wrappers),
// the server's read timeout still bounds it.
//
// The body is read into chunks of at most bodyChunk, each charged to hold
// before it is allocated, never at the declared Content-Length: a client
// declaring 1 MiB and sending half holds half a MiB and a chunk. A body of
// more than one chunk is then copied into one buffer of its exact length
// (the charge drops to it). On failure readBody has given back what it
// charged; on success the caller releases hold once the signature is
// checked.
func (r *Receiver) readBody(w http.ResponseWriter, req *http.Request, limit int64, hold *admission.Hold) (_ []byte, err error) {
	rc := http.NewResponseController(w)
	start := time.Now()
	defer func() {
		if err != nil {
			hold.Release()
		}
	}()
	declared := req.ContentLength // -1: unknown (chunked)
	// next is the size of the next chunk after total bytes: the declared
	// length's rest (and a byte to see the end), else growing from 512
	// with what arrived; at most bodyChunk, and a byte past limit.
	next := func(total int64) int64 {
		n := min(int64(bodyChunk), max(512, total))
		if declared >= 0 {
			n = min(int64(bodyChunk), declared+1-total)
		}
		return max(1, min(n, limit+1-total))
	}
	var chunks [][]byte
	var total int64
	var cur []byte
	body := http.MaxBytesReader(w, req.Body, limit)
	deadlines := true
	for {
		if deadlines {
			d := start.Add(r.cfg.BodyGrace + time.Duration(float64(total)/float64(r.cfg.MinBodyRate)*float64(time.Second)))
			if err := rc.SetReadDeadline(d); err != nil {
				deadlines = false
			}
		}
		if len(cur) == cap(cur) {
			size := next(total)
			if err := hold.Take(size); err != nil {
				return nil, err
			}
			if cur != nil {
				chunks = append(chunks, cur)
			}
			cur = make([]byte, 0, size)
		}
		n, err := body.Read(cur[len(cur):cap(cur)])
		cur = cur[:len(cur)+n]
		total += int64(n)
		if err != nil {
			if deadlines {
				_ = rc.SetReadDeadline(time.Time{})
			}
			if errors.Is(err, io.EOF) {
				return joinChunks(chunks, cur, total, hold), nil
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, errSlowBody
			}
			return nil, err
		}
	}
}

// joinChunks is the body of chunks and last, total bytes: last itself when
// it is the only chunk, else one buffer of exactly total bytes, the charge
// of hold lowered to it.
func joinChunks(chunks [][]byte, last []byte, total int64, hold *admission.Hold) []byte {
	if len(chunks) == 0 {
		return last
	}
	body := make([]byte, 0, total)
	for _, c := range chunks {
		body = append(body, c...)
	}
	body = append(body, last...)
	hold.Keep(total)
	return body
}
