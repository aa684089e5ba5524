#pragma once

#include <string>

#include "graph/builder.hpp"
#include "graph/models/mlp.hpp"

namespace pe {

/// What the built-in classifiers share after their layers: softmax_with_cross_entropy of
/// `logits` against m.label, the mean loss, accuracy, the test program (Paddle's
/// clone(for_test=True), taken before backward), then backward and the optimizer (`kind`:
/// sgd | momentum | adam) in m.main. Fills m.loss, m.accuracy and m.test.
void finish_classifier(program_builder& b, model_programs& m, const std::string& logits,
                       const std::string& kind, float learning_rate, float momentum);

} // namespace pe
