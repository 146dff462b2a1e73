package event_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/consumers/fetch"
)

func TestStage(t *testing.T) {
	fwd := &event.StageError{Stage: "forward:billing", Err: errors.New("forward to x: status 500")}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&fetch.APIError{Status: 503, Path: "/v1/x"}, event.StageFetch},
		{fmt.Errorf("wrapped: %w", event.Permanent(fwd)), "forward:billing"},
		{errors.Join(fwd, errors.New("other")), "forward:billing"},
		{errors.New("apply effect: boom"), event.StageApply},
	} {
		if got := event.Stage(tc.err); got != tc.want {
			t.Errorf("Stage(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
