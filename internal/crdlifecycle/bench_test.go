package crdlifecycle

import "testing"

// BenchmarkHolds is the check Apply makes per CRD before it decides not
// to write: our three GIE CRDs against equal live copies.
func BenchmarkHolds(b *testing.B) {
	want, err := GIECRDs()
	if err != nil {
		b.Fatal(err)
	}
	live, err := GIECRDs()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range want {
			same, err := holds(live[i], want[i])
			if err != nil || !same {
				b.Fatal(same, err)
			}
		}
	}
}
