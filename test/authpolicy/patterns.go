package authpolicy

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"google.golang.org/protobuf/types/known/structpb"
)

var structpbValue = reflect.TypeFor[*structpb.Value]()

// PatternMatching is an authorization rule of patterns, all of which must
// hold. Each pattern here is a CEL predicate; the selector/operator form,
// the all/any groups and named pattern references are not applied (an
// error, never a pass).
type PatternMatching struct {
	Patterns []Pattern `json:"patterns"`
}

// Pattern is one pattern: a CEL predicate over request and auth.
type Pattern struct {
	Predicate  string `json:"predicate,omitempty"`
	Selector   string `json:"selector,omitempty"`
	Operator   string `json:"operator,omitempty"`
	Value      string `json:"value,omitempty"`
	PatternRef string `json:"patternRef,omitempty"`
	All        []any  `json:"all,omitempty"`
	Any        []any  `json:"any,omitempty"`
}

func (pm *PatternMatching) check() error {
	if len(pm.Patterns) == 0 {
		return errors.New("patternMatching: no patterns")
	}
	env, err := celEnv()
	if err != nil {
		return err
	}
	for i, p := range pm.Patterns {
		if p.Predicate == "" || p.Selector != "" || p.Operator != "" || p.Value != "" || p.PatternRef != "" || p.All != nil || p.Any != nil {
			return fmt.Errorf("patternMatching.patterns[%d]: only a CEL predicate is applied by this test tool", i)
		}
		if _, iss := env.Compile(p.Predicate); iss.Err() != nil {
			return fmt.Errorf("patternMatching.patterns[%d]: compile %q: %w", i, p.Predicate, iss.Err())
		}
	}
	return nil
}

// match evaluates the predicates in order. As in Authorino, a predicate
// that evaluates to false, or that fails to evaluate (a missing key, a
// value of another type), denies: why says which and how.
func (pm *PatternMatching) match(vars map[string]any) (ok bool, why string, err error) {
	env, err := celEnv()
	if err != nil {
		return false, "", err
	}
	for i, p := range pm.Patterns {
		ast, iss := env.Compile(p.Predicate)
		if iss.Err() != nil {
			return false, "", fmt.Errorf("patterns[%d]: compile %q: %w", i, p.Predicate, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			return false, "", fmt.Errorf("patterns[%d]: program %q: %w", i, p.Predicate, err)
		}
		out, _, err := prg.Eval(vars)
		if err != nil {
			return false, fmt.Sprintf("%s: %v", p.Predicate, err), nil
		}
		b, isBool := out.Value().(bool)
		if !isBool {
			return false, fmt.Sprintf("%s: a %T, not a bool", p.Predicate, out.Value()), nil
		}
		if !b {
			return false, p.Predicate + " is false", nil
		}
	}
	return true, "", nil
}

func celEnv() (*cel.Env, error) {
	return cel.NewEnv(cel.Variable("request", cel.DynType), cel.Variable("auth", cel.DynType), ext.Strings())
}

// Success is a policy's success response: only filters, each a JSON
// object of properties from CEL expressions (Kuadrant passes them to the
// policies after it, the rate limits, as auth.<filter>.<property>).
// Headers, dynamic metadata and wristbands are not applied.
type Success struct {
	Filters map[string]SuccessFilter `json:"filters,omitempty"`
}

// SuccessFilter is one exported object.
type SuccessFilter struct {
	JSON *struct {
		Properties map[string]Value `json:"properties"`
	} `json:"json,omitempty"`
	Evaluation
}

func (s *Success) check() error {
	for name, f := range s.Filters {
		if f.JSON == nil || f.Priority != 0 {
			return fmt.Errorf("filters.%s: only json with properties is applied by this test tool", name)
		}
		for prop, v := range f.JSON.Properties {
			if v.Selector != "" {
				return fmt.Errorf("filters.%s.json.properties.%s: selector is not applied by this test tool; use expression", name, prop)
			}
		}
	}
	return nil
}

// export evaluates the filters on a request let through.
func (s *Success) export(vars map[string]any) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	for _, name := range sortedKeys(s.Filters) {
		props := map[string]any{}
		for _, prop := range sortedKeys(s.Filters[name].JSON.Properties) {
			v := s.Filters[name].JSON.Properties[prop]
			if v.Expression == "" {
				props[prop] = v.Value
				continue
			}
			val, err := evalCEL(v.Expression, vars)
			if err != nil {
				return nil, fmt.Errorf("response.success.filters.%s.json.properties.%s: %w", name, prop, err)
			}
			props[prop] = val.AsInterface()
		}
		out[name] = props
	}
	return out, nil
}
