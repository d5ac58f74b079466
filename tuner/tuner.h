// The public C++ API of tuner: #include <tuner/tuner.h>.
#ifndef TUNER_TUNER_TUNER_H_
#define TUNER_TUNER_TUNER_H_

#include "search/random_sampler.h"
#include "search/sampler.h"
#include "search/scheduler.h"
#include "search/search_space.h"
#include "storage/in_memory_storage.h"
#include "storage/storage.h"
#include "trials/distribution.h"
#include "trials/error.h"
#include "trials/frozen_trial.h"
#include "tuner/study.h"
#include "tuner/trial.h"

#endif  // TUNER_TUNER_TUNER_H_
