package fail

import "testing"

func TestFail(t *testing.T) { t.Fatal("fails on purpose") }
