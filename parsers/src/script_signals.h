// ScriptSignals (parsers/links.h), counted node by node in the link
// extractor's walk (private to the parsers).
#ifndef PARSERS_SCRIPT_SIGNALS_H_
#define PARSERS_SCRIPT_SIGNALS_H_

#include <gumbo.h>

#include "parsers/links.h"

namespace crawler::parsers {

// Adds what `node` (any node: elements, text) says to `s`.
void NoteScriptSignals(const GumboNode& node, ScriptSignals& s);

}  // namespace crawler::parsers

#endif  // PARSERS_SCRIPT_SIGNALS_H_
