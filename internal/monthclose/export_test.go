package monthclose

// SetPartLimits sets how many entries a month manifest holds itself and
// how many a part holds, and returns what puts them back.
func SetPartLimits(inline, part int) func() {
	oldInline, oldPart := inlineEntries, partEntries
	inlineEntries, partEntries = inline, part
	return func() { inlineEntries, partEntries = oldInline, oldPart }
}
