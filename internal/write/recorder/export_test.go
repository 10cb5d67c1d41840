package recorder

// What the tests of KeepByTrace need to see of its bounds.
const (
	MaxDecisions = maxDecisions
	DecisionTTL  = decisionTTL
)
