// The public C++ API of tuner: #include <tuner/tuner.h>.
#ifndef TUNER_TUNER_TUNER_H_
#define TUNER_TUNER_TUNER_H_

#include "search/pareto.h"
#include "search/registry.h"
#include "search/samplers/auto_sampler.h"
#include "search/samplers/gp/gp_sampler.h"
#include "search/samplers/grid_sampler.h"
#include "search/samplers/nsga2_sampler.h"
#include "search/samplers/random_sampler.h"
#include "search/samplers/sampler.h"
#include "search/samplers/tpe/tpe_sampler.h"
#include "search/schedulers/asha.h"
#include "search/schedulers/hyperband.h"
#include "search/schedulers/median_stopping.h"
#include "search/schedulers/patience.h"
#include "search/schedulers/scheduler.h"
#include "search/space/search_space.h"
#include "storage/in_memory_storage.h"
#include "storage/sqlite_storage.h"
#include "storage/storage.h"
#include "trials/distribution.h"
#include "trials/error.h"
#include "trials/frozen_trial.h"
#include "tuner/study.h"
#include "tuner/trial.h"

#endif  // TUNER_TUNER_TUNER_H_
