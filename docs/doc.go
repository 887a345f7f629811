// Package docs holds the project's documentation pages (the Markdown
// files beside this one) and the code that keeps them true: the tool
// reference (tools.md) is rendered from the golden tools/list answer that
// gateway/toolslist_test.go pins, and the tests here check that tools.md
// is what the renderer makes of it, that every relative link in the
// README and these pages resolves, and that the README's copyable curl
// session runs against a real gateway.
//
// Regenerate tools.md after a change to the golden file with
//
//	make docs
//
// (go test ./docs -run TestToolsReference -update).
package docs
