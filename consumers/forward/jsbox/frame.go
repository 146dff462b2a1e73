package jsbox

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// The protocol between the parent and a worker, over the worker's stdin
// and stdout: frames of a 4-byte big-endian length and a JSON value. The
// parent sends an initRequest, the worker answers a response (Kind "" or
// KindCompile); then each request is answered by one response.

// maxFrame bounds a frame either way: the largest delivery or payload
// and its envelope. A worker that sends more is killed.
const maxFrame = 4*MaxOutput + 64<<10

type initRequest struct {
	Source  string        `json:"source"`
	Timeout time.Duration `json:"timeout"`
}

type request struct {
	Type string          `json:"type"`
	Body json.RawMessage `json:"body"`
}

type response struct {
	Kind    Kind              `json:"kind,omitempty"` // "": the script ran
	Error   string            `json:"error,omitempty"`
	Cancel  bool              `json:"cancel,omitempty"`
	Payload json.RawMessage   `json:"payload,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

func writeFrame(w *bufio.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	if len(b) > maxFrame {
		return fmt.Errorf("frame of %d bytes exceeds %d", len(b), maxFrame)
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	return w.Flush()
}

func readFrame(r *bufio.Reader, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxFrame {
		return fmt.Errorf("frame of %d bytes exceeds %d", size, maxFrame)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("read frame: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode frame: %w", err)
	}
	return nil
}

// Depth is the deepest nesting of objects and arrays in the JSON text b
// (0 for a scalar): one pass, no recursion, so a hostile document costs
// its length and nothing more.
func Depth(b []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
