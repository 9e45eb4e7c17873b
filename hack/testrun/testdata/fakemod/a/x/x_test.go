package x

import "testing"

func TestPass(t *testing.T) { t.Log("package a/x") }
