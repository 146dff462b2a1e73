package consumers

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/schemas"
)

// Through the real pipeline (receiver, relay, Kafka, consumer): a forward
// entry's when: and transform from the configuration; the events it takes
// arrive transformed and signed, the others are not sent, and one the
// transform refuses is dead-lettered with the transform's error.
func TestForwardFilterAndTransformInThePipeline(t *testing.T) {
	svc := newTeamService(t)
	pl := forwardPipeline(t, svc, `        when: {data.payment_id: {prefix: pay_}}
        transform: |
          function handler(webhook) {
            const id = webhook.payload.data.event.data.payment_id;
            if (id === "pay_poison") throw new Error("cannot shape " + id);
            webhook.payload = {payment: id};
            return webhook;
          }
`)
	pl.sendRef("fw_ok", "pay_ok")
	pl.sendRef("fw_other", "acct_1") // not taken by when:
	pl.sendRef("fw_poison", "pay_poison")
	pl.waitState(schemas.StateSucceeded, 60*time.Second, "fw_ok")
	pl.waitState(schemas.StateDead, 60*time.Second, "fw_poison")
	svc.Mu.Lock()
	body := string(svc.Bodies["ref:fw_ok"])
	_, other := svc.Bodies["ref:fw_other"]
	svc.Mu.Unlock()
	if body != `{"payment":"pay_ok"}` || other {
		t.Errorf("team received %q (other sent: %v)", body, other)
	}
	if r := pl.inbox("fw_poison"); !strings.Contains(r.LastError, "cannot shape pay_poison") {
		t.Errorf("the dead event's error: %q", r.LastError)
	}
}
