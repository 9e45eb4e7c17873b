// Package presetlint checks presets the way a service would meet them: each
// preset is rendered into sample services of every topology it can apply to,
// and every object that comes out is checked against the real CRD schemas
// (OpenAPI and CEL rules, offline). Problems come back as "file:line:
// message" lines naming the preset, the sample and the field.
package presetlint
