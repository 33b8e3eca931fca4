#include "compass/selector.h"
