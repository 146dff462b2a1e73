package console

import (
	"bytes"
	"encoding/json"
	"sort"
	"time"

	"github.com/gatehouse/gatehouse/api"
)

// ForwardView is one row of the event page's "Forwarded" table: a
// destination and, when a transform shaped the delivery, the body and the
// headers it sent (indented JSON, as the stored payload is shown).
type ForwardView struct {
	Destination string
	DeliveredAt time.Time
	Dropped     bool
	Transformed bool
	Body        string
	Headers     []string // "Name: value", sorted
}

func forwardView(f api.Forward) ForwardView {
	v := ForwardView{Destination: f.Destination, DeliveredAt: f.DeliveredAt, Dropped: f.Dropped}
	if f.Body != nil {
		v.Transformed = true
		var pretty bytes.Buffer
		if json.Indent(&pretty, f.Body, "", "    ") == nil {
			v.Body = pretty.String()
		} else {
			v.Body = string(f.Body)
		}
	}
	for k, val := range f.Headers {
		v.Transformed = true
		v.Headers = append(v.Headers, k+": "+val)
	}
	sort.Strings(v.Headers)
	return v
}
