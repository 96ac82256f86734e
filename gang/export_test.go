package gang

// HeldTemplates counts the roles of p that still hold their resolved instance (and so its pod
// template) after the build: for TestBuiltPlanKeepsNoTemplate.
func HeldTemplates(p *Plan) int {
	n := 0
	for _, r := range p.Roles {
		if r.instance != nil {
			n++
		}
	}
	return n
}
