// Overloaded: a visitor built from lambdas, for std::visit over the project's variants.
#ifndef TUNER_TRIALS_OVERLOADED_H_
#define TUNER_TRIALS_OVERLOADED_H_

namespace tuner {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
// Needed by compilers without aggregate deduction for class templates (clang 14).
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace tuner

#endif  // TUNER_TRIALS_OVERLOADED_H_
