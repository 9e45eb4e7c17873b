// Package presetstest gives tests the shipped presets as `odh-serving
// render` uses them without flags (presets.Default) and the images they
// name (presets.Images), failing the test when either cannot be read.
package presetstest
