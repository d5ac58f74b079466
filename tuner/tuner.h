// The public C++ API of tuner: #include <tuner/tuner.h>.
#ifndef TUNER_TUNER_TUNER_H_
#define TUNER_TUNER_TUNER_H_

#include "search/asha.h"
#include "search/grid_sampler.h"
#include "search/hyperband.h"
#include "search/median_stopping.h"
#include "search/nsga2_sampler.h"
#include "search/pareto.h"
#include "search/patience.h"
#include "search/random_sampler.h"
#include "search/sampler.h"
#include "search/scheduler.h"
#include "search/search_space.h"
#include "search/tpe_sampler.h"
#include "storage/in_memory_storage.h"
#include "storage/sqlite_storage.h"
#include "storage/storage.h"
#include "trials/distribution.h"
#include "trials/error.h"
#include "trials/frozen_trial.h"
#include "tuner/study.h"
#include "tuner/trial.h"

#endif  // TUNER_TUNER_TUNER_H_
