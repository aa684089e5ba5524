#include "graph/models/classifier.hpp"

#include "graph/backward.hpp"
#include "graph/optimizer.hpp"
#include "graph/program_info.hpp"

namespace pe {

void finish_classifier(program_builder& b, model_programs& m, const std::string& logits,
                       const std::string& kind, float learning_rate, float momentum) {
  auto [softmax, loss] = b.softmax_with_cross_entropy(logits, m.label);
  m.loss = b.mean(loss);
  m.accuracy = b.accuracy(softmax, m.label);
  m.test = clone_for_test(m.main, m.label);

  auto params_grads = append_backward(m.main, m.loss);
  optimizer_config opt;
  opt.kind = kind;
  opt.learning_rate = learning_rate;
  opt.momentum = momentum;
  append_optimizer(b, opt, params_grads);
}

} // namespace pe
