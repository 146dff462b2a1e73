package console

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"time"
)

// cursor is the keyset position of the events list (the last row shown).
type cursor struct {
	At       time.Time `json:"t"`
	Provider string    `json:"p"`
	EventID  string    `json:"e"`
}

func (c cursor) String() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseCursor(s string) (*cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	c := &cursor{}
	if err := json.Unmarshal(b, c); err != nil || c.At.IsZero() {
		return nil, errors.New("bad cursor")
	}
	return c, nil
}

// unescape decodes a path parameter chi left escaped (the path had
// escapes); a value that does not decode is used as it is.
func unescape(s string) string {
	if v, err := url.PathUnescape(s); err == nil {
		return v
	}
	return s
}
