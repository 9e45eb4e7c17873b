package cli

import (
	"github.com/spf13/pflag"

	"github.com/opendatahub-io/odh-serving/engine/tier"
)

// addTierFlags registers --tier-config-namespace, --tier-config-name and
// --tier-namespace-prefix on fs: the controller and the MaaS API server
// take the same flags, so the chart passes both the same values.
func addTierFlags(fs *pflag.FlagSet, s *tier.Source) {
	fs.StringVar(&s.ConfigMapNamespace, "tier-config-namespace", "",
		"namespace of the MaaS tier ConfigMap; default: the system namespace")
	fs.StringVar(&s.ConfigMapName, "tier-config-name", tier.ConfigMapName,
		"name of the MaaS tier ConfigMap (key "+tier.ConfigMapKey+": a YAML list of {name, displayName, description, level, groups})")
	fs.StringVar(&s.NamespacePrefix, "tier-namespace-prefix", tier.DefaultNamespacePrefix,
		"a MaaS tier's namespace is this prefix and the tier's name")
}
