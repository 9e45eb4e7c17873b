package validation

// GeneratedSchemas are the generated schema builders, for the test that
// holds them to the JSON they come from.
var GeneratedSchemas = servedSchemas
