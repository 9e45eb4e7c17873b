// Package tiertest holds the bad tier ConfigMaps that every reader of the
// tier list is tested with: the controller, the MaaS API server and
// offline render each read them through tier.FromConfigMap, and their
// tests check that each returns the same error for the same ConfigMap.
package tiertest
