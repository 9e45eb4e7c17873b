package tier_test

import (
	"fmt"

	"github.com/opendatahub-io/odh-serving/engine/tier"
)

func Example() {
	c, err := tier.Parse(`
- {name: free, level: 0, groups: [system:authenticated]}
- {name: premium, level: 1, groups: [premium-users]}
`, tier.DefaultNamespacePrefix)
	if err != nil {
		fmt.Println(err)
		return
	}
	t, _ := c.Resolve([]string{"system:authenticated", "premium-users"})
	fmt.Println("tier:", t.Name, "namespace:", c.Namespace(t.Name))

	grant := c.Grant(tier.ReadAnnotation(map[string]string{tier.AnnotationTiers: `["premium","gold"]`}))
	for _, p := range grant.Tiers {
		fmt.Println("bind", c.ServiceAccountGroup(p.Name))
	}
	fmt.Println(grant.Err)
	// Output:
	// tier: premium namespace: maas-default-gateway-tier-premium
	// bind system:serviceaccounts:maas-default-gateway-tier-premium
	// annotation alpha.maas.opendatahub.io/tiers: "[\"premium\",\"gold\"]" names unknown tier "gold"; the tiers are "free", "premium"
}
