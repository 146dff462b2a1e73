package inbox

import (
	"testing"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
