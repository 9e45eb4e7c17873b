// Package corpus reads the repository's golden inputs (the engine's golden
// cases and the shipped presets) for tests and fuzz targets that seed from
// them.
package corpus
