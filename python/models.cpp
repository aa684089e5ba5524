// pe_actor.models: the C++ builder's models, so that training needs no Paddle.
#include "graph/models/cnn.hpp"
#include "graph/models/mlp.hpp"
#include "python/bindings.hpp"
#include "python/programs.hpp"

namespace py = pybind11;

namespace pe::python {

namespace {

/// A model's programs for Python: each a pe_actor.Program of its own.
struct python_model {
  program_ptr startup, main, test;
  std::string image, label, loss, accuracy;
};

python_model to_python(model_programs m) {
  return {std::make_shared<proto::ProgramDesc>(std::move(m.startup)),
          std::make_shared<proto::ProgramDesc>(std::move(m.main)),
          std::make_shared<proto::ProgramDesc>(std::move(m.test)),
          m.image, m.label, m.loss, m.accuracy};
}

} // namespace

void bind_models(py::module_& m) {
  py::module_ models = m.def_submodule("models", "The built-in models (graph/models).");
  py::class_<python_model>(models, "Model",
                           "A training setup: startup, main (forward, backward, optimizer) and test "
                           "programs, and the names to feed and fetch.")
      .def_readonly("startup", &python_model::startup)
      .def_readonly("main", &python_model::main)
      .def_readonly("test", &python_model::test)
      .def_readonly("image", &python_model::image, "FP32 input feed")
      .def_readonly("label", &python_model::label, "INT64 class ids feed [-1, 1]")
      .def_readonly("loss", &python_model::loss, "FP32 mean cross-entropy")
      .def_readonly("accuracy", &python_model::accuracy, "FP32 accuracy (main and test programs)");

  const mlp_config mlp;
  models.def(
      "mlp",
      [](int input_width, std::vector<int> hidden, int classes, std::string optimizer,
         float learning_rate, float momentum, std::uint64_t seed) {
        mlp_config c;
        c.input_width = input_width;
        c.hidden = std::move(hidden);
        c.classes = classes;
        c.optimizer = std::move(optimizer);
        c.learning_rate = learning_rate;
        c.momentum = momentum;
        c.seed = seed;
        return to_python(build_mlp(c));
      },
      py::arg("input_width") = mlp.input_width, py::arg("hidden") = mlp.hidden,
      py::arg("classes") = mlp.classes, py::arg("optimizer") = mlp.optimizer,
      py::arg("learning_rate") = mlp.learning_rate, py::arg("momentum") = mlp.momentum,
      py::arg("seed") = mlp.seed,
      "The multi-layer perceptron: image [-1, input_width] -> fc(hidden[i], relu)... -> "
      "fc(classes) -> softmax_with_cross_entropy -> mean; optimizer sgd | momentum | adam.");

  const cnn_config cnn;
  models.def(
      "cnn",
      [](std::vector<int> channels, std::vector<int> fc, int classes, std::string optimizer,
         float learning_rate, float momentum, std::uint64_t seed) {
        cnn_config c;
        c.channels = std::move(channels);
        c.fc = std::move(fc);
        c.classes = classes;
        c.optimizer = std::move(optimizer);
        c.learning_rate = learning_rate;
        c.momentum = momentum;
        c.seed = seed;
        return to_python(build_cnn(c));
      },
      py::arg("channels") = cnn.channels, py::arg("fc") = cnn.fc, py::arg("classes") = cnn.classes,
      py::arg("optimizer") = cnn.optimizer, py::arg("learning_rate") = cnn.learning_rate,
      py::arg("momentum") = cnn.momentum, py::arg("seed") = cnn.seed,
      "The LeNet-like CNN for 28x28 grey images (image [-1, 1, 28, 28]): two blocks of "
      "conv 5x5 -> batch_norm -> relu -> max pool 2x2, fc layers with relu, "
      "fc(classes) -> softmax_with_cross_entropy -> mean.");
}

} // namespace pe::python
