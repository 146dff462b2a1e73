package schemas

import (
	"testing"

	"github.com/tidwall/gjson"
	"gopkg.in/yaml.v3"
)

// The conditions language of fetch rules and forward entries: a scalar is
// the exact value; equals, in, exists and prefix; every condition must
// hold; a malformed condition is refused.
func TestConditions(t *testing.T) {
	var cs Conditions
	if err := yaml.Unmarshal([]byte(`
data.object.object: subscription
data.object.status: {in: [active, trialing]}
data.object.customer: {prefix: cus_}
data.object.deleted: {exists: false}
data.object.amount: {equals: "1999"}
`), &cs); err != nil {
		t.Fatal(err)
	}
	doc := func(s string) gjson.Result { return gjson.Parse(s) }
	ok := doc(`{"data":{"object":{"object":"subscription","status":"trialing","customer":"cus_1","amount":1999}}}`)
	if !cs.Holds(ok) {
		t.Errorf("%s does not hold in %s", cs, ok.Raw)
	}
	for _, bad := range []string{
		`{"data":{"object":{"object":"invoice","status":"trialing","customer":"cus_1","amount":1999}}}`,
		`{"data":{"object":{"object":"subscription","status":"canceled","customer":"cus_1","amount":1999}}}`,
		`{"data":{"object":{"object":"subscription","status":"active","customer":"acct_1","amount":1999}}}`,
		`{"data":{"object":{"object":"subscription","status":"active","customer":"cus_1","amount":1999,"deleted":"yes"}}}`,
		`{"data":{"object":{"object":"subscription","status":"active","customer":"cus_1"}}}`,
	} {
		if cs.Holds(doc(bad)) {
			t.Errorf("holds in %s", bad)
		}
	}
	var flags Conditions
	if err := yaml.Unmarshal([]byte(`{data.live: true, data.meta: {exists: true}}`), &flags); err != nil {
		t.Fatal(err)
	}
	if !flags.Holds(doc(`{"data":{"live":true,"meta":{}}}`)) || flags.Holds(doc(`{"data":{"live":false,"meta":{}}}`)) || flags.Holds(doc(`{"data":{"live":true,"meta":null}}`)) {
		t.Error("a boolean compares as true/false; exists holds for an object, not for null")
	}
	for _, bad := range []string{`x: {in: [a], prefix: b}`, `x: {}`, `x: {exists: maybe}`} {
		var c Conditions
		if err := yaml.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := cs.String(); got != "data.object.amount=1999, data.object.customer starts with cus_, data.object.deleted absent, data.object.object=subscription, data.object.status in [active trialing]" {
		t.Errorf("String() = %q", got)
	}
}
