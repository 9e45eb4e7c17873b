package naming_test

import (
	"fmt"
	"strings"

	"github.com/opendatahub-io/odh-serving/engine/naming"
)

func ExampleChildName() {
	short, _ := naming.ChildName("llama", "-inference-pool")
	long, _ := naming.ChildName(strings.Repeat("x", 60), "-inference-pool")
	fmt.Println(short)
	fmt.Println(len(long), strings.HasSuffix(long, "-inference-pool"))
	// Output:
	// llama-inference-pool
	// 63 true
}

func ExampleSafeChildName() {
	name, _ := naming.SafeChildName(strings.Repeat("x", 60), "-kserve-mn")
	fmt.Println(len(name), strings.HasSuffix(name, "-kserve-mn"))
	// Output:
	// 43 true
}
