package schemas

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// ErasureNoticeType is the ce_type (and the value's type) of an erasure
// notice: the record an erasure publishes on the provider's topic, through
// the outbox, for each event it erased (admin.Erase). It is not an event
// to process: gatehouse's consumers skip it, and a data team's consumer
// erases its own copies of the events it names. The type is reserved: no
// provider event may use it.
const ErasureNoticeType = "gatehouse.erasure"

// ErasureNotice is the value of an erasure notice record
// (erasure-notice.schema.json). Its key is the erased event's key (the
// outbox aggregateid of the event: the same partition, after the event);
// its ce_id is ID. It never holds the erased value or an object id: the
// selector is the audit's, a keyed digest at most.
type ErasureNotice struct {
	// ID is the notice's ce_id: ErasureNoticeID(ErasureID, EventIDs[0]).
	ID   string `json:"id"`
	Type string `json:"type"` // ErasureNoticeType
	// CreatedAt is when the erasure was requested (the audit row's
	// requested_at), RFC 3339 in UTC; also the record's ce_time.
	CreatedAt string `json:"created_at"`
	ErasureID int64  `json:"erasure_id"` // the audit row (erasures.id)
	Provider  string `json:"provider"`
	// EventIDs are the erased events' ids (their ce_id): one per notice
	// today; a list so that a notice covering several events keeps the
	// same shape.
	EventIDs []string `json:"event_ids"`
	// Selector is the audit's selector: "event <id>", "object <digest>"
	// or "path <path> = <digest>".
	Selector string `json:"selector"`
}

// ErasureNoticeIDPrefix begins every erasure notice's ce_id
// (ErasureNoticeID); the receiver refuses a provider event id beginning
// with it, so no stored event can take a notice's id.
const ErasureNoticeIDPrefix = "erasure:"

// ErasureNoticeID is the ce_id of the notice of erasure erasureID for
// event eventID: unique per erasure and event, never equal to the event's
// own ce_id, so a consumer deduplicating by ce_id keeps both.
func ErasureNoticeID(erasureID int64, eventID string) string {
	return ErasureNoticeIDPrefix + strconv.FormatInt(erasureID, 10) + ":" + eventID
}

// ErasedPayload reports whether payload is the erasure marker that
// replaces an erased event's payload ({"erased": true, "erasure_id": N},
// exactly these two members) and returns N.
func ErasedPayload(payload []byte) (int64, bool) {
	if !bytes.Contains(payload, []byte(`"erased"`)) {
		return 0, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(payload, &m) != nil || len(m) != 2 || string(m["erased"]) != "true" {
		return 0, false
	}
	n, err := strconv.ParseInt(string(m["erasure_id"]), 10, 64)
	return n, err == nil
}
