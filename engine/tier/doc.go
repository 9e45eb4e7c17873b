// Package tier reads the tiers of Models-as-a-Service (MaaS) in ODH's
// formats, so that every part of odh-serving reads them the same way:
//   - the tier list: the ConfigMap tier-to-group-mapping, key tiers, a YAML
//     list of {name, displayName, description, level, groups}
//     (FromConfigMap, the one reader of the ConfigMap, whose errors name it
//     and wrap a sentinel: ErrNoKey, ErrMalformed, ...; Parse reads the
//     key's value);
//   - the namespace of a tier: a prefix and the tier's name, ODH's
//     <instance>-tier-<name> with the instance maas-default-gateway
//     (Config.Namespace); a tier's ServiceAccount tokens are minted there;
//   - which tier a caller's groups resolve to: the highest level among the
//     tiers whose groups, or whose namespace's ServiceAccount group, the
//     caller is in; the first listed on a tie (Config.Resolve);
//   - which tiers a service is published to: the annotation
//     alpha.maas.opendatahub.io/tiers, a JSON list of tier names where []
//     is every tier (ReadAnnotation), and what it grants under the tier
//     list (Config.Grant): the one decision of both the RoleBindings and
//     the models listed, failing closed on bad input.
//
// The engine builds each published service's model-user Role and its
// tiers' RoleBindings from these; the MaaS API server resolves callers and
// lists models with them; Source says where the ConfigMap is, the same
// flags for both (internal/cli registers them), so one chart value reaches
// both. The package reads no cluster: callers pass the ConfigMap in.
package tier
