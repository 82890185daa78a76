// sheetrelay on Azure Container Apps (deploy/README.md says how to deploy it and why it is
// shaped this way):
// - the api: a Container App with external ingress, liveness/readiness probes on /healthz and
//   /readyz, Prometheus /metrics on an internal-only port;
// - the relay: a small always-on Container App (`worker run --role relay`, one replica), so an
//   upload reaches the queue milliseconds after it commits;
// - webhook delivery: a small always-on Container App (`worker run --role webhooks`, one
//   replica), so an event reaches its endpoints milliseconds after it commits; it needs no
//   storage, only Postgres and the key that seals webhook secrets;
// - the consumer: an event-driven Container Apps job (`worker run --role consumer --drain`),
//   started by a KEDA azure-queue rule on the task queue that authenticates with the job's
//   managed identity, scaled to zero when the queue is empty;
// - Blob sources (docs/sources.md): an event-driven job (`worker run --role sources --drain`)
//   started by a KEDA azure-queue rule on the queue Event Grid delivers `BlobCreated` events to,
//   and the same command on a schedule every five minutes, the listing's safety net; an Event
//   Grid subscription on each storage account in `watchedStorageAccounts` feeds that queue
//   (modules/source-events.bicep);
// - Postgres Flexible Server on a private network, a Storage account used with Entra ID only,
//   a user-assigned identity per role with the storage roles it needs (modules/storage.bicep),
//   and Log Analytics for the environment's logs.
//
// Every environment variable set here is one `api --help` or `worker run --help` lists, and
// the job's timeout and scale rule are checked against the worker: tests/it/deploy/.

targetScope = 'resourceGroup'

@description('Prefix of every resource name: lowercase letters, digits and hyphens.')
@minLength(3)
@maxLength(16)
param name string = 'sheetrelay'

param location string = resourceGroup().location

@description('The api image: the Dockerfile\'s `api` target (ENTRYPOINT /usr/local/bin/api).')
param apiImage string

@description('The worker image: the Dockerfile\'s `worker` target (ENTRYPOINT /usr/local/bin/worker).')
param workerImage string

@description('Registry the images are pulled from with each app\'s identity (e.g. myregistry.azurecr.io; give the three identities AcrPull on it). Empty for a public registry.')
param registryServer string = ''

// Sizes. Container Apps' consumption profile takes CPU/memory pairs such as 0.25/0.5Gi,
// 0.5/1Gi, 1/2Gi, 2/4Gi.
@description('api CPU cores per replica.')
param apiCpu string = '0.5'
param apiMemory string = '1Gi'
param apiMinReplicas int = 1
param apiMaxReplicas int = 4
@description('Relay CPU cores (one replica, always on).')
param relayCpu string = '0.25'
param relayMemory string = '0.5Gi'
@description('Consumer job CPU cores per replica. The parse child may use up to PARSE_MEMORY_LIMIT (1 GiB) besides the worker.')
param consumerCpu string = '1'
param consumerMemory string = '2Gi'
param postgresSkuName string = 'Standard_B1ms'
param postgresSkuTier string = 'Burstable'
param postgresStorageGB int = 32

// How the consumer job scales (deploy/README.md, "How the consumer scales").
@description('Queue messages per job execution the scaler aims at (KEDA azure-queue queueLength).')
@minValue(1)
param queueLength int = 5

@description('Most job executions running at once.')
@minValue(1)
param maxExecutions int = 20

@description('Seconds between two looks at the queue by the scaler.')
@minValue(5)
param pollingInterval int = 30

@description('Seconds a job replica may run before it is stopped. A replica stops taking work after WORKER_MAX_RUNTIME (20 min, set below) and exits once what it holds is done, so this must exceed the longer of that and the worker\'s PARSE_TIMEOUT (10 min), plus its SHUTDOWN_GRACE (25 s).')
@minValue(1260)
param replicaTimeout int = 1800

param queueName string = 'parse-tasks'
param blobContainer string = 'uploads'
param databaseName string = 'sheetrelay'
param postgresAdminLogin string = 'sheetrelay'

@secure()
@description('Password of the Postgres administrator, which the apps connect as.')
param postgresAdminPassword string

@description('WEBHOOK_SECRET_KEY: 32 random bytes, base64 (`openssl rand -base64 32`). Seals webhook signing secrets in Postgres; the api and webhook delivery share it.')
@secure()
param webhookSecretKey string

param webhooksCpu string = '0.25'
param webhooksMemory string = '0.5Gi'

// Blob sources (docs/sources.md).
@description('The queue Event Grid delivers BlobCreated events of watched containers to (SOURCE_EVENTS_QUEUE).')
param sourceEventsQueue string = 'source-events'
@description('Most sources job executions running at once.')
@minValue(1)
param sourcesMaxExecutions int = 5
param sourcesCpu string = '0.5'
param sourcesMemory string = '1Gi'
@description('Storage accounts whose BlobCreated events go to the sources queue: [{ name, resourceGroup }] in this subscription. Sources may watch containers elsewhere too: they are listed every SOURCE_POLL_INTERVAL, or Event Grid pushes to the api.')
param watchedStorageAccounts array = []

module network 'modules/network.bicep' = {
  name: 'network'
  params: {
    name: name
    location: location
  }
}

module postgres 'modules/postgres.bicep' = {
  name: 'postgres'
  params: {
    name: name
    location: location
    subnetId: network.outputs.postgresSubnetId
    privateDnsZoneId: network.outputs.postgresDnsZoneId
    skuName: postgresSkuName
    skuTier: postgresSkuTier
    storageSizeGB: postgresStorageGB
    databaseName: databaseName
    adminLogin: postgresAdminLogin
    adminPassword: postgresAdminPassword
  }
}

resource apiIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${name}-api'
  location: location
}

resource relayIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${name}-relay'
  location: location
}

// Webhook delivery's identity only pulls its image: it holds no storage role.
resource webhooksIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${name}-webhooks'
  location: location
}

resource consumerIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${name}-consumer'
  location: location
}

// Blob sources copy blobs into the uploads container and read the events queue; a source with
// `{"managed_identity": true}` opens the tenant's container as this identity.
resource sourcesIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${name}-sources'
  location: location
}

module storage 'modules/storage.bicep' = {
  name: 'storage'
  params: {
    name: name
    location: location
    blobContainer: blobContainer
    queueName: queueName
    apiPrincipalId: apiIdentity.properties.principalId
    relayPrincipalId: relayIdentity.properties.principalId
    consumerPrincipalId: consumerIdentity.properties.principalId
    sourceEventsQueue: sourceEventsQueue
    sourcesPrincipalId: sourcesIdentity.properties.principalId
  }
}

// Each watched account's BlobCreated events, into the sources queue.
module sourceEvents 'modules/source-events.bicep' = [for watched in watchedStorageAccounts: {
  name: 'source-events-${watched.name}'
  scope: resourceGroup(watched.resourceGroup)
  params: {
    watchedAccountName: watched.name
    location: location
    queueAccountId: storage.outputs.accountId
    queueName: sourceEventsQueue
  }
}]

resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: '${name}-logs'
  location: location
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: 30
  }
}

resource environment 'Microsoft.App/managedEnvironments@2025-01-01' = {
  name: '${name}-env'
  location: location
  properties: {
    appLogsConfiguration: {
      destination: 'log-analytics'
      logAnalyticsConfiguration: {
        customerId: logs.properties.customerId
        sharedKey: logs.listKeys().primarySharedKey
      }
    }
    vnetConfiguration: {
      infrastructureSubnetId: network.outputs.appsSubnetId
      internal: false
    }
    workloadProfiles: [
      {
        name: 'Consumption'
        workloadProfileType: 'Consumption'
      }
    ]
  }
}

// The connection string carries the password: a Container Apps secret, never a plain value.
// No TLS parameter: see modules/postgres.bicep.
var databaseUrl = 'postgres://${postgresAdminLogin}:${uriComponent(postgresAdminPassword)}@${postgres.outputs.fqdn}:5432/${databaseName}'
var secrets = [
  {
    name: 'database-url'
    value: databaseUrl
  }
  {
    name: 'webhook-secret-key'
    value: webhookSecretKey
  }
]

resource api 'Microsoft.App/containerApps@2025-01-01' = {
  name: '${name}-api'
  location: location
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${apiIdentity.id}': {}
    }
  }
  dependsOn: [storage]
  properties: {
    environmentId: environment.id
    workloadProfileName: 'Consumption'
    configuration: {
      secrets: secrets
      registries: empty(registryServer) ? [] : [{ server: registryServer, identity: apiIdentity.id }]
      ingress: {
        external: true
        targetPort: 8080
        // HTTP/1.1 to the container (the api speaks nothing else, so that every connection is
        // under its header-read timeout); clients may still use HTTP/2 with the ingress.
        transport: 'http'
        allowInsecure: false
        // /metrics (METRICS_ADDR) for a scraper inside the environment, never on the public port.
        additionalPortMappings: [
          {
            external: false
            targetPort: 9090
            exposedPort: 9090
          }
        ]
      }
    }
    template: {
      containers: [
        {
          name: 'api'
          image: apiImage
          command: [ '/usr/local/bin/api' ]
          args: [ 'serve' ]
          env: [
            { name: 'DATABASE_URL', secretRef: 'database-url' }
            { name: 'AZURE_STORAGE_ACCOUNT', value: storage.outputs.accountName }
            { name: 'AZURE_STORAGE_CREDENTIAL', value: 'managed-identity' }
            { name: 'AZURE_CLIENT_ID', value: apiIdentity.properties.clientId }
            { name: 'BLOB_CONTAINER', value: blobContainer }
            { name: 'QUEUE_NAME', value: queueName }
            { name: 'LISTEN_ADDR', value: '0.0.0.0:8080' }
            { name: 'METRICS_ADDR', value: '0.0.0.0:9090' }
            { name: 'LOG_FORMAT', value: 'json' }
            { name: 'WEBHOOK_SECRET_KEY', secretRef: 'webhook-secret-key' }
          ]
          resources: {
            cpu: json(apiCpu)
            memory: apiMemory
          }
          probes: [
            {
              type: 'Startup'
              httpGet: { path: '/healthz', port: 8080 }
              periodSeconds: 2
              failureThreshold: 30
            }
            {
              type: 'Liveness'
              httpGet: { path: '/healthz', port: 8080 }
              periodSeconds: 10
              failureThreshold: 3
            }
            {
              // Not ready while Postgres is unreachable: no traffic to a replica that can only 503.
              type: 'Readiness'
              httpGet: { path: '/readyz', port: 8080 }
              periodSeconds: 5
              failureThreshold: 2
            }
          ]
        }
      ]
      scale: {
        minReplicas: apiMinReplicas
        maxReplicas: apiMaxReplicas
        rules: [
          {
            name: 'http'
            http: {
              metadata: {
                concurrentRequests: '50'
              }
            }
          }
        ]
      }
    }
  }
}

resource relay 'Microsoft.App/containerApps@2025-01-01' = {
  name: '${name}-relay'
  location: location
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${relayIdentity.id}': {}
    }
  }
  dependsOn: [storage]
  properties: {
    environmentId: environment.id
    workloadProfileName: 'Consumption'
    configuration: {
      secrets: secrets
      registries: empty(registryServer) ? [] : [{ server: registryServer, identity: relayIdentity.id }]
    }
    template: {
      containers: [
        {
          name: 'relay'
          image: workerImage
          command: [ '/usr/local/bin/worker' ]
          args: [ 'run', '--role', 'relay' ]
          env: [
            { name: 'DATABASE_URL', secretRef: 'database-url' }
            { name: 'AZURE_STORAGE_ACCOUNT', value: storage.outputs.accountName }
            { name: 'AZURE_STORAGE_CREDENTIAL', value: 'managed-identity' }
            { name: 'AZURE_CLIENT_ID', value: relayIdentity.properties.clientId }
            { name: 'QUEUE_NAME', value: queueName }
            { name: 'LOG_FORMAT', value: 'json' }
            // Each tenant's fair share: twice the consumer slots (maxExecutions executions of
            // CONSUMER_CONCURRENCY, 8, each), so a tenant alone fills every execution and another
            // tenant's upload waits behind about two tasks' time (docs/scaling.md).
            { name: 'RELAY_TENANT_IN_FLIGHT', value: string(2 * maxExecutions * 8) }
          ]
          resources: {
            cpu: json(relayCpu)
            memory: relayMemory
          }
        }
      ]
      // Always one: a relay that scaled to zero would add the scaler's polling interval to
      // every upload's wait. Claims of a relay that dies are claimable again within RELAY_LEASE.
      scale: {
        minReplicas: 1
        maxReplicas: 1
      }
    }
  }
}

resource webhooks 'Microsoft.App/containerApps@2025-01-01' = {
  name: '${name}-webhooks'
  location: location
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${webhooksIdentity.id}': {}
    }
  }
  properties: {
    environmentId: environment.id
    workloadProfileName: 'Consumption'
    configuration: {
      secrets: secrets
      registries: empty(registryServer) ? [] : [{ server: registryServer, identity: webhooksIdentity.id }]
    }
    template: {
      containers: [
        {
          name: 'webhooks'
          image: workerImage
          command: [ '/usr/local/bin/worker' ]
          args: [ 'run', '--role', 'webhooks' ]
          env: [
            { name: 'DATABASE_URL', secretRef: 'database-url' }
            { name: 'WEBHOOK_SECRET_KEY', secretRef: 'webhook-secret-key' }
            { name: 'LOG_FORMAT', value: 'json' }
          ]
          resources: {
            cpu: json(webhooksCpu)
            memory: webhooksMemory
          }
        }
      ]
      // Always one, like the relay: woken by NOTIFY, it POSTs within milliseconds of a commit.
      // Deliveries claimed by a replica that dies are claimable again within WEBHOOK_LEASE.
      scale: {
        minReplicas: 1
        maxReplicas: 1
      }
    }
  }
}

resource consumer 'Microsoft.App/jobs@2025-01-01' = {
  name: '${name}-consumer'
  location: location
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${consumerIdentity.id}': {}
    }
  }
  dependsOn: [storage]
  properties: {
    environmentId: environment.id
    workloadProfileName: 'Consumption'
    configuration: {
      triggerType: 'Event'
      replicaTimeout: replicaTimeout
      // A failed replica is not retried in place: its message becomes visible again and the
      // scaler starts another execution (the worker counts deliveries, MAX_DEQUEUE_COUNT).
      replicaRetryLimit: 0
      secrets: secrets
      registries: empty(registryServer) ? [] : [{ server: registryServer, identity: consumerIdentity.id }]
      eventTriggerConfig: {
        parallelism: 1
        replicaCompletionCount: 1
        scale: {
          minExecutions: 0
          maxExecutions: maxExecutions
          pollingInterval: pollingInterval
          rules: [
            {
              name: 'parse-tasks'
              type: 'azure-queue'
              metadata: {
                accountName: storage.outputs.accountName
                queueName: queueName
                queueLength: string(queueLength)
              }
              // Managed identity instead of a connection string (shared keys are off).
              identity: consumerIdentity.id
            }
          ]
        }
      }
    }
    template: {
      containers: [
        {
          name: 'consumer'
          image: workerImage
          command: [ '/usr/local/bin/worker' ]
          args: [ 'run', '--role', 'consumer', '--drain' ]
          env: [
            { name: 'DATABASE_URL', secretRef: 'database-url' }
            { name: 'AZURE_STORAGE_ACCOUNT', value: storage.outputs.accountName }
            { name: 'AZURE_STORAGE_CREDENTIAL', value: 'managed-identity' }
            { name: 'AZURE_CLIENT_ID', value: consumerIdentity.properties.clientId }
            { name: 'BLOB_CONTAINER', value: blobContainer }
            { name: 'QUEUE_NAME', value: queueName }
            { name: 'LOG_FORMAT', value: 'json' }
            // Take no new work after this, finish what is held, exit 0: before replicaTimeout.
            { name: 'WORKER_MAX_RUNTIME', value: '20m' }
          ]
          resources: {
            cpu: json(consumerCpu)
            memory: consumerMemory
          }
        }
      ]
    }
  }
}

// The sources role as a job on the events queue: one execution drains the queue, lists the
// sources that are due and imports what it found, then exits 0.
var sourcesEnv = [
  { name: 'DATABASE_URL', secretRef: 'database-url' }
  { name: 'AZURE_STORAGE_ACCOUNT', value: storage.outputs.accountName }
  { name: 'AZURE_STORAGE_CREDENTIAL', value: 'managed-identity' }
  { name: 'AZURE_CLIENT_ID', value: sourcesIdentity.properties.clientId }
  { name: 'BLOB_CONTAINER', value: blobContainer }
  { name: 'SOURCE_EVENTS_QUEUE', value: sourceEventsQueue }
  { name: 'WEBHOOK_SECRET_KEY', secretRef: 'webhook-secret-key' }
  { name: 'LOG_FORMAT', value: 'json' }
  // Take no new work after this, finish what is held, exit 0: before replicaTimeout.
  { name: 'WORKER_MAX_RUNTIME', value: '20m' }
]

resource sources 'Microsoft.App/jobs@2025-01-01' = {
  name: '${name}-sources'
  location: location
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${sourcesIdentity.id}': {}
    }
  }
  dependsOn: [storage]
  properties: {
    environmentId: environment.id
    workloadProfileName: 'Consumption'
    configuration: {
      triggerType: 'Event'
      replicaTimeout: replicaTimeout
      replicaRetryLimit: 0
      secrets: secrets
      registries: empty(registryServer) ? [] : [{ server: registryServer, identity: sourcesIdentity.id }]
      eventTriggerConfig: {
        parallelism: 1
        replicaCompletionCount: 1
        scale: {
          minExecutions: 0
          maxExecutions: sourcesMaxExecutions
          pollingInterval: pollingInterval
          rules: [
            {
              name: 'source-events'
              type: 'azure-queue'
              metadata: {
                accountName: storage.outputs.accountName
                queueName: sourceEventsQueue
                queueLength: '100'
              }
              identity: sourcesIdentity.id
            }
          ]
        }
      }
    }
    template: {
      containers: [
        {
          name: 'sources'
          image: workerImage
          command: [ '/usr/local/bin/worker' ]
          args: [ 'run', '--role', 'sources', '--drain' ]
          env: sourcesEnv
          resources: {
            cpu: json(sourcesCpu)
            memory: sourcesMemory
          }
        }
      ]
    }
  }
}

// The listing's safety net: the same run every five minutes, whether or not events came (an
// event lost, a container Event Grid does not watch, events pushed to the api).
resource sourcesSweep 'Microsoft.App/jobs@2025-01-01' = {
  name: '${name}-sources-sweep'
  location: location
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${sourcesIdentity.id}': {}
    }
  }
  dependsOn: [storage]
  properties: {
    environmentId: environment.id
    workloadProfileName: 'Consumption'
    configuration: {
      triggerType: 'Schedule'
      replicaTimeout: replicaTimeout
      replicaRetryLimit: 0
      secrets: secrets
      registries: empty(registryServer) ? [] : [{ server: registryServer, identity: sourcesIdentity.id }]
      scheduleTriggerConfig: {
        cronExpression: '*/5 * * * *'
        parallelism: 1
        replicaCompletionCount: 1
      }
    }
    template: {
      containers: [
        {
          name: 'sources'
          image: workerImage
          command: [ '/usr/local/bin/worker' ]
          args: [ 'run', '--role', 'sources', '--drain' ]
          env: sourcesEnv
          resources: {
            cpu: json(sourcesCpu)
            memory: sourcesMemory
          }
        }
      ]
    }
  }
}

output apiUrl string = 'https://${api.properties.configuration.ingress.fqdn}'
output storageAccount string = storage.outputs.accountName
output consumerJob string = consumer.name
