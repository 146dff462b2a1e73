package forward

import (
	"testing"

	"github.com/gatehouse/gatehouse/internal/testkit"
)

// forwardSecret is the Standard Webhooks secret of the forward tests.
const forwardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// newTeamService starts a team's receiving service verifying with
// forwardSecret.
func newTeamService(t *testing.T) *testkit.TeamService {
	return testkit.NewTeamService(t, forwardSecret)
}
