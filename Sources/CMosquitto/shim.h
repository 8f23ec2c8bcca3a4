#ifndef PACER_CMOSQUITTO_SHIM_H
#define PACER_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
#include <mqtt_protocol.h>
#endif
